program constants_invalid2
const L = 99999999999999999999
const F = 1e999
