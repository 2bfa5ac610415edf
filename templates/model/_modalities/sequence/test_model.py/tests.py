

def test_padding_does_not_change_the_output() -> None:
    model = build(dropout=0.0).eval()
    batch = example_batch(SPEC, 4)
    with torch.no_grad():
        together = model(**batch)  # (B, num_outputs)
        length = int(batch["lengths"][1])
        alone = model(
            inputs=batch["inputs"][1:2, :length],
            lengths=batch["lengths"][1:2],
            padding_mask=batch["padding_mask"][1:2, :length],
        )  # (1, num_outputs)
    torch.testing.assert_close(together[1:2], alone, rtol=1e-4, atol=1e-5)
