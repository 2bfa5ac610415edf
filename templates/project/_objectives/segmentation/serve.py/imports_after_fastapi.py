from PIL import Image
from torch.utils.data import default_collate
