    assert Path(result["confusion_matrix_csv"]).is_file()
