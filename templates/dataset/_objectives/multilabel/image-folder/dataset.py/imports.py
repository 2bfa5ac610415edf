
import csv
import dataclasses
import hashlib
import json
