import gc
import sys

from .cli import main

status = main()
gc.freeze()  # the exit's last garbage collection would walk all of torch's objects (0.5 s)
sys.exit(status)
