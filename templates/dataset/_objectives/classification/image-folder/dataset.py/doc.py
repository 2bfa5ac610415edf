"""{{ name }}: images in class folders (ptgen dataset kind "image-folder").

Layout of `data.root`:
    root/train/<class>/*.png|jpg|jpeg|bmp|gif|webp|tif|tiff
    root/val/<class>/...        optional; without it `data.val_fraction` of each
                                training class is held out (the same files every run)
    root/test/<class>/...       optional; read only by `evaluate --split test`
Hidden files and folders (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are ignored; a
class folder without images, or a validation class that training lacks, is an error.
