    generate.add_arguments(
        add("generate", "Continue a prompt with the trained model: sampled, the same per --seed.")
    )
