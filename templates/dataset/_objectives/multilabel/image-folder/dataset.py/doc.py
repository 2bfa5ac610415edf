"""{{ name }}: images with label sets (ptgen dataset kind "image-folder", multi-label).

Layout of `data.root`:
    root/train/**/*.png|jpg|jpeg|bmp|gif|webp|tif|tiff   any sub-folders
    root/val/...                optional; without it `data.val_fraction` of the training
                                images is held out (the same files every run)
    root/test/...               optional; read only by `evaluate --split test`
    root/labels.csv             `data.labels_file`: each image's labels, by its path
                                relative to root. CSV: a header, then `file,labels` rows,
                                the labels joined by `data.label_separator` ("|"); or
                                JSON: {"train/a.png": ["cat", "dog"], ...}
An image missing from the labels file, or an entry naming no image under root, is an
error; an empty label set (an empty cell, or []) is a sample with none of the labels. The
labels are those that occur in the training split, sorted.
Hidden files and folders (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are ignored.
