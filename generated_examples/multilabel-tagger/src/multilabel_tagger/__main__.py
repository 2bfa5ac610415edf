import gc
import sys

from .cli import main

status = main()
# The interpreter's last garbage collection walks every object that torch's imports made
# (0.5 s once torch._dynamo is loaded); nothing is left to collect that needs it.
gc.freeze()
sys.exit(status)
