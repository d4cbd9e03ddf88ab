(* SPDX-License-Identifier: MIT *)
(* Exceptions raised through several frames and caught, for a few
   rounds.  A raise (caml_raise_exn with -g; inlined as a jump without)
   loads the stack pointer from the innermost trap frame and returns (or
   jumps) into its handler, skipping the frames between: here into
   round's, or into middle's, whose handler raises again to round's. *)
exception Found of int
exception Other of int

let[@inline never] leaf n =
  if n mod 3 = 1 then raise (Found n);
  if n mod 3 = 2 then raise (Other n);
  n * 2

let[@inline never] level3 n = leaf (n + 1) + 1

let[@inline never] middle n =
  try level3 (n + 1) + 1 with Found k -> raise (Other (k + 1))

let[@inline never] level1 n = middle (n + 1) + 1
let[@inline never] after n = n + 7

let[@inline never] round n =
  let v = try level1 n with Other k -> k in
  after v

let () =
  let sum = ref 0 in
  for i = 0 to 5 do
    sum := !sum + round i
  done;
  print_int !sum;
  print_newline ()
