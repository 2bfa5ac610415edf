import math
