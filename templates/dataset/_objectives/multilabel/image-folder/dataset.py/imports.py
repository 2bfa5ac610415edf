
import csv
import dataclasses
import json
