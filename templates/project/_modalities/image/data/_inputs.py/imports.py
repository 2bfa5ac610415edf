import glob
import os
