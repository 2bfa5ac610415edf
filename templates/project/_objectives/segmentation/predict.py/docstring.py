Each input's mask (the argmax class id per pixel, at the model's input size, data.image_size
square) is written as a PNG to --mask-dir, by default masks/ beside the checkpoint, never the
data's own (palette mode in the data's palette colours when it has one, else grey values that
are the ids), with --overlay also the image with the mask over it; the record names the files
and each class's share of the pixels. An existing mask is replaced only with --force.
