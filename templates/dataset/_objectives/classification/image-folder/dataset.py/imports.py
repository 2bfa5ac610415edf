
import dataclasses
import hashlib
