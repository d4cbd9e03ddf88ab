// Four goroutines share out a sum over a channel: a Go program, built
// with Debian's golang, for the capture backends (its runtime's own
// threads, its stack switches, its calls through registers).
package main

import (
	"fmt"
	"sort"
)

func work(id int, n int, out chan<- int) {
	s := 0
	for i := 0; i < n; i++ {
		s += (i * id) % (id + 6)
	}
	out <- s
}

func main() {
	out := make(chan int)
	for id := 1; id <= 4; id++ {
		go work(id, 20000, out)
	}
	sums := []int{}
	for i := 0; i < 4; i++ {
		sums = append(sums, <-out)
	}
	sort.Ints(sums)
	fmt.Println(sums)
}
