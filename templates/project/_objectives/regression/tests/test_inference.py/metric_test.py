

def test_metrics_are_in_the_target_units() -> None:
    state = {"target_mean": 100.0, "target_std": 10.0}
    task = get_task(TASK).for_data(DataSpec(num_outputs=1), state)
    targets = torch.tensor([[0.0], [1.0], [-1.0], [0.0]])  # standardised: 100, 110, 90, 100
    outputs = torch.tensor([[0.5], [1.0], [-1.0], [-0.5]])  # 105, 110, 90, 95
    assert task.to_units(outputs).flatten().tolist() == [105.0, 110.0, 90.0, 95.0]
    result = task.summarise(task.metric_sums(outputs, targets), 4)
    assert result["mae"] == pytest.approx(2.5)  # (5 + 0 + 0 + 5) / 4, in target units
    assert result["rmse"] == pytest.approx(12.5**0.5)  # errors 5, 0, 0, 5
    assert result["r2"] == pytest.approx(1 - 0.5 / 2)  # scale-free
