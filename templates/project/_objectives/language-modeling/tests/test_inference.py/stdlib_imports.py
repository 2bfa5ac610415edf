
import math
