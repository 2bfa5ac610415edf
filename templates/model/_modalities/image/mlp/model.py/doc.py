
Images are flattened: the input size is derived from the data (channels x size x size),
never hard-coded, so changing `data.image_size` needs no edit here.
