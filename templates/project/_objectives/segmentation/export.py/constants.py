MIN_SIDE = 8  # the smallest height and width an export takes
CHECK_SIDES = (40, 27)  # image sides checked besides data.image_size (odd included)
