#!/usr/bin/env python3
"""Write a copy of specs/kda/kda_fwd.cake whose `vblock` option has more
chain block shapes than the shipped spec, for benchmarking the chain's
block shape (bench_kda.py --package P --vblock 16w ...):

    v16w   16 columns of V, 256 threads, one block per multiprocessor
    v32w   32 columns, 256 threads, two blocks per multiprocessor
    v32w1  32 columns, 256 threads, one block per multiprocessor

(the shipped v32, v16 and v16x1 take 128 threads). The copy is derived
from the shipped spec at build time, so it follows it.

    python3 benchmarks/chain_blocks.py OUT.cake
    cakec OUT.cake --arch=sm_90a --option gate=softplus,qk_norm=true,beta_logits=true -o DIR
"""
import sys

SPEC = 'specs/kda/kda_fwd.cake'


def derive(text):
    def swap(old, new):
        nonlocal text
        if old not in text:
            sys.exit(f'chain_blocks.py: {SPEC} no longer has {old!r}; update this script')
        text = text.replace(old, new)

    swap('option vblock = v32 in (v32, v16, v16x1)', 'option vblock = v32 in (v32, v16, v16x1, v16w, v32w, v32w1)')
    swap('''} else {
  const BV = 16, PER_SM = 1
}''', '''} else if vblock == v16x1 {
  const BV = 16, PER_SM = 1
}
if vblock == v16w {
  const BV = 16, PER_SM = 1, NT = 256
} else if vblock == v32w {
  const BV = 32, PER_SM = 2, NT = 256
} else if vblock == v32w1 {
  const BV = 32, PER_SM = 1, NT = 256
} else {
  const NT = 128
}''')
    swap('kernel chain over (n in docs, h in HV, j in V / BV) per_sm PER_SM {',
         'kernel chain over (n in docs, h in HV, j in V / BV) threads NT per_sm PER_SM {')
    return text


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(SPEC) as f:
        out = derive(f.read())
    with open(sys.argv[1], 'w') as f:
        f.write(out)
