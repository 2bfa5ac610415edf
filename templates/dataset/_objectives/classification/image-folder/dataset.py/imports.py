
import dataclasses
