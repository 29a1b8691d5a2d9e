program require_invalid2
dim T, H, HV
require 0 < H < HV
