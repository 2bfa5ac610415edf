
import numpy as np
from PIL import Image
