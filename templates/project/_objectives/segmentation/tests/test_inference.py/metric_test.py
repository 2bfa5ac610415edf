

def test_metrics_of_known_masks_leave_unlabelled_pixels_out() -> None:
    spec = DataSpec(num_outputs=3, ignore_index=255)
    task = get_task(TASK).for_data(spec, {"classes": ["bg", "a", "b"]})
    targets = torch.tensor([[[0, 0, 1], [1, 2, 255]]])  # (1, 2, 3); one unlabelled pixel
    predicted = torch.tensor([[[0, 1, 1], [1, 0, 2]]])  # the last is wrong, but ignored
    outputs = torch.nn.functional.one_hot(predicted, 3).permute(0, 3, 1, 2).float()
    sums = task.metric_sums(outputs, targets)  # outputs: (1, 3, 2, 3) scores
    assert sums["confusion"].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    result = task.summarise(sums, 1)
    assert result["pixel_accuracy"] == pytest.approx(3 / 5)
    per_class = task.details(sums)["per_class"]
    assert [per_class[name]["iou"] for name in ("bg", "a", "b")] == pytest.approx([1 / 3, 2 / 3, 0])
    assert result["miou"] == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)
    # the loss leaves the unlabelled pixel out: a confident wrong score there costs nothing
    wrong = outputs.clone()
    wrong[0, :, 1, 2] = torch.tensor([100.0, -100.0, -100.0])
    torch.testing.assert_close(task.loss(wrong, targets), task.loss(outputs, targets))
