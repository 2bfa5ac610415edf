

def test_perplexity_of_a_uniform_model_is_the_vocabulary_size() -> None:
    task = get_task(TASK).for_data(DataSpec(num_outputs=8), {})
    outputs = torch.zeros(2, 5, 8)  # (B, T, vocab): every next token equally likely
    targets = torch.randint(0, 8, (2, 5))  # (B, T)
    result = task.summarise(task.metric_sums(outputs, targets), 2)
    assert result["nats_per_token"] == pytest.approx(math.log(8))
    assert result["perplexity"] == pytest.approx(8.0)
    assert float(task.loss(outputs, targets)) == pytest.approx(math.log(8))
