    export.add_arguments(
        add("export", "Export a trained model (torch.export or ONNX) and a JSON sidecar, checked.")
    )
