    for _ in range(spare):  # fsdp: join the other ranks' weight gathers; not counted
        with precision.autocast():
            model(**model_inputs(batch))
