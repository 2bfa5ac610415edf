
The images are the `data.image_column` (default: the first Image column), the classes the
`data.label_column` (a ClassLabel's names, in its order; text or integer labels: the
values of the training split, sorted). Images go through the image-folder kind's steps
(data/_images.py): each is checked cheaply first, and the ones that cannot be used are
all listed in one error, or left out with `data.skip_bad_files=true`; decoded once (EXIF
orientation, RGB, resized to data.image_size x data.image_size) into `data.cache`: "disk"
(the default) writes them to one file in `data.cache_dir`, named by the splits'
fingerprints (the datasets library's hash of their content) and the rows taken, reused by
later runs until the dataset changes; "memory" holds them for this run only; "none"
decodes every epoch. Training images are augmented (`data.augment`, see _augment.py) and
all are normalised per channel with the mean/std of the training split; class names and
statistics go into `bundle.state` (saved in checkpoints), so evaluation and `predict`
(image files) prepare images exactly as training did.
