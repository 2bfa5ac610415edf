def test_repeated_blocks_are_distinct_parts_of_the_model() -> None:
    # train.strategy=fsdp shards each block on its own, then the rest of the model
    model = build()
    blocks, parts = model.repeated_blocks(), [id(m) for m in model.modules()]
    assert blocks and all(id(block) in parts[1:] for block in blocks)
    assert len({id(block) for block in blocks}) == len(blocks)
