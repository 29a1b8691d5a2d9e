/* run.h - `cakec run`: one entry of a program on the CPU interpreter, with
 * tensors read from and written to .npy files.
 *
 * Contract: cakec_run() takes the arguments after `cakec` (argv[0] is
 * "run"), prints diagnostics and notes on stderr and the files it wrote on
 * stdout, and returns cakec's exit status: 0, 1 for errors in the spec or
 * while running it, 2 for bad arguments, bad or mismatched .npy files and
 * I/O failures, 3 for an internal error of the compiler. No input makes it
 * crash or allocate without bound: sizes are overflow-checked and the
 * tensors' memory is capped (--max-memory).
 */
#ifndef CAKE_RUN_H
#define CAKE_RUN_H

int cakec_run(int argc, char **argv);

#endif
