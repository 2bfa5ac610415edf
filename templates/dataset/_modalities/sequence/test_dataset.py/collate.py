    lengths, mask = batch["lengths"], batch["padding_mask"]
{%- from "_lib/parts.jinja" import length_part with context %}
{{- length_part("dataset/test_dataset.py", "batch_shape") }}
    assert torch.equal((~mask).sum(dim=1), lengths)
    assert bool((batch["inputs"][mask] == 0).all())  # padding positions hold the pad index
    assert bool((batch["inputs"][~mask] != 0).all())  # real tokens are never the pad index
