

def test_metrics_of_a_known_confusion_matrix() -> None:
    task = get_task(TASK).for_data(DataSpec(num_outputs=3), {"classes": ["a", "b", "c"]})
    targets = torch.tensor([0, 0, 1, 1, 2, 2])
    predicted = torch.tensor([0, 1, 1, 1, 0, 2])
    outputs = torch.nn.functional.one_hot(predicted, 3).float()  # (6, 3) scores
    sums = task.metric_sums(outputs, targets)
    assert sums["confusion"].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    result = task.summarise(sums, 6)
    assert result["accuracy"] == pytest.approx(4 / 6)
    per_class = task.details(sums)["per_class"]
    assert per_class["b"] == pytest.approx(
        {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2}
    )
    assert result["macro_f1"] == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert "top5_accuracy" not in result  # only from 5 classes
