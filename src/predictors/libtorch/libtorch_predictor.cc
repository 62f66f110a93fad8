// placeholder: replaced by the predictor implementation
