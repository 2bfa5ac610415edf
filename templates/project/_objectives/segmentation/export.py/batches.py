    batches = [example_batch(inference.spec, size) for size in CHECK_BATCH_SIZES]
    for side in CHECK_SIDES:  # other image sizes: the height and width are dynamic too
        batches.append(example_batch(dataclasses.replace(inference.spec, image_size=side), 2))
