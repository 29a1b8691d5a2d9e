#!/bin/sh
# ptxas_refusing.sh REAL ARGS...: the real ptxas, except that it fails for
# the chip in $REFUSE (to test what a failed assembly does to the others).
real=$1
shift
for a in "$@"; do
  if [ "$a" = "-arch=$REFUSE" ]; then
    echo "ptxas (test): refusing $REFUSE" >&2
    exit 1
  fi
done
exec "$real" "$@"
