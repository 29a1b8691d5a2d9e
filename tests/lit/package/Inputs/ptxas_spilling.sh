#!/bin/sh
# ptxas_spilling.sh REAL ARGS...: the real ptxas, except that for the chip in
# $SPILL a kernel that asks for two blocks per multiprocessor reports spills
# first (to test the fall back to one block without depending on how many
# registers a shipped kernel happens to need).
real=$1
shift
spill=0 ptx=
for a in "$@"; do
  [ "$a" = "-arch=$SPILL" ] && spill=1
  case "$a" in *.ptx) ptx=$a ;; esac
done
if [ $spill = 1 ] && [ -n "$ptx" ] && grep -q 'minnctapersm 2' "$ptx"; then
  echo "ptxas info    : (test) 8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads"
fi
exec "$real" "$@"
