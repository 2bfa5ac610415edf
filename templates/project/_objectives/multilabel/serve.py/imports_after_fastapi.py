from torch.utils.data import default_collate
