

def test_thresholds_are_tuned_per_label_and_metrics_are_known() -> None:
    task = get_task(TASK).for_data(DataSpec(num_outputs=2), {"classes": ["a", "b"]})
    targets = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    probabilities = torch.tensor([[0.9, 0.05], [0.8, 0.25], [0.2, 0.2], [0.1, 0.1]])
    outputs = torch.logit(probabilities)  # (4, 2) scores
    sums = task.metric_sums(outputs, targets)
    result = task.summarise(sums, 4)
    # label a separates at any threshold in (0.2, 0.8]; label b at (0.1, 0.2]
    assert 0.2 < result["thresholds"][0] <= 0.8 and 0.1 < result["thresholds"][1] <= 0.2
    assert result["micro_f1"] == pytest.approx(1.0) and result["map"] == pytest.approx(1.0)
    fixed = task.with_thresholds([0.5, 0.5])  # b is never predicted at 0.5
    decided = [[True, False], [True, False], [False, False], [False, False]]
    assert fixed.decide(outputs).tolist() == decided
    again = fixed.summarise(sums, 4)
    assert again["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 0 + 2))  # TP 2, FN 2
    assert again["macro_f1"] == pytest.approx(0.5)  # a: F1 1, b: F1 0
    per_label = fixed.details(sums)["per_class"]
    assert per_label["b"]["recall"] == 0.0 and per_label["b"]["support"] == 2
    assert per_label["b"]["average_precision"] == pytest.approx(1.0)  # ranking still perfect
    loss = task.loss(outputs, targets)
    expected = torch.nn.functional.binary_cross_entropy(probabilities, targets)
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)
