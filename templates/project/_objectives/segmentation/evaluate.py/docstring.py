its data prepared with the state saved in the checkpoint, exactly as in training. Besides
pixel accuracy and mean IoU, the result holds each class's IoU and labelled pixel count,
and the pixel confusion matrix; pixels marked `ignore_index` are not counted.
