
The images are the `data.image_column` (default: the first Image column), the classes the
`data.label_column` (a ClassLabel's names, in its order; text or integer labels: the
values of the training split, sorted). Every image is decoded once, before training, as
the image-folder kind decodes a file (EXIF orientation, RGB, resized to data.image_size x
data.image_size), and held as uint8 pixels; the ones that do not decode are all listed in
one error, or left out with `data.skip_bad_files=true`. Training images are augmented
(`data.augment`, see _augment.py) and all are normalised per channel with the mean/std of
the training split; class names and statistics go into `bundle.state` (saved in
checkpoints), so evaluation and `predict` (image files) prepare images exactly as
training did.
