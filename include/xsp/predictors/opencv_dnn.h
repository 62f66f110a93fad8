// OpenCV DNN predictor (ONNX graphs). Compiled only when XSP_WITH_OPENCV_DNN is defined.
#pragma once

namespace xsp {

/// Registers the "opencv-dnn" predictor with the predictor registry (idempotent).
///
/// What it does: loads the manifest's `opencv-dnn` graph (ONNX) with cv::dnn::readNetFromONNX on
/// DNN_BACKEND_OPENCV / DNN_TARGET_CPU (device "cpu" only); framework_version() is OpenCV's CV_VERSION.
/// Its framework profiler emits one FRAMEWORK span per layer that ran in each forward, from OpenCV's own
/// per-layer timings (cv::dnn::Net::getPerfProfile): name = OpenCV layer type ("Convolution"), tags
/// "module" (the ONNX node name, e.g. "/layer1/layer1.0/conv1/Conv"), "layer_id", "shapes" (the layer's
/// input blob shapes, when OpenCV can infer them) and "start_reconstructed" = "true": OpenCV reports
/// durations only, so starts are reconstructed by laying the layers end to end, in execution order, from the
/// forward call's start. Layers OpenCV fused into their predecessor (e.g. ReLU into Convolution) report no
/// time and get no span; their number is counted in "framework.fused_layers".
void register_opencv_dnn_predictor();

}  // namespace xsp
