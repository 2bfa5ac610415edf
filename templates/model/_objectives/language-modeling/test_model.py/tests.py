

def test_a_position_sees_no_later_token() -> None:
    model = build(dropout=0.0).eval()
    inputs = example_batch(SPEC, 2)["inputs"]  # (B, T)
    changed = inputs.clone()
    changed[:, -1] = (changed[:, -1] + 1) % SPEC.num_outputs  # only the last token differs
    with torch.no_grad():
        before, after = model(inputs=inputs), model(inputs=changed)  # (B, T, vocab)
    torch.testing.assert_close(after[:, :-1], before[:, :-1])
    assert not torch.allclose(after[:, -1], before[:, -1])
