// Eight goroutines pass work over channels while a ninth grows its stack
// by deep recursion: a Go program whose scheduler switches goroutines,
// whose runtime copies a stack (morestack, newstack), and whose
// sync.WaitGroup parks and wakes goroutines, for the capture backends and
// the goroutine stacks built from their captures.  Its output does not
// depend on the schedule.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

// deep recurses n levels with a frame of some size: the goroutine's first
// stack (a few KiB) is copied to larger ones on the way down.
//
//go:noinline
func deep(n int, pad [16]int) int {
	if n == 0 {
		return pad[3]
	}
	pad[n%16] += n
	return deep(n-1, pad) + pad[(n+5)%16]%7
}

// stage takes numbers from in, works on each, and passes them on.
//
//go:noinline
func stage(id int, in <-chan int, out chan<- int, wg *sync.WaitGroup) {
	defer wg.Done()
	for v := range in {
		s := v
		for i := 0; i < 50; i++ {
			s = (s*31 + id + i) % 1000003
		}
		out <- s
	}
	close(out)
}

func main() {
	workers, items, depth := 8, 40, 2000
	if len(os.Args) > 1 {
		workers, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		depth, _ = strconv.Atoi(os.Args[2])
	}
	var wg sync.WaitGroup
	first := make(chan int)
	in := first
	for id := 1; id <= workers; id++ {
		out := make(chan int)
		wg.Add(1)
		go stage(id, in, out, &wg)
		in = out
	}
	grown := make(chan int)
	wg.Add(1)
	go func() {
		defer wg.Done()
		grown <- deep(depth, [16]int{})
	}()
	go func() {
		for i := 0; i < items; i++ {
			first <- i
		}
		close(first)
	}()
	sum := 0
	for v := range in {
		sum += v
	}
	d := <-grown
	wg.Wait()
	fmt.Println("workers", workers, "sum", sum, "deep", d)
}
