"""How gru_float.tflite and simplernn_float.tflite were made (tensorflow-cpu 2.21, Keras 3).

Two stacked Keras RNN layers (16 units returning sequences, then 12 units) over a (1, 20, 8)
sequence and a 4-way softmax, random weights (seed 0), converted by the TFLite converter with its
defaults. Keras GRU / SimpleRNN have no fused TFLite kernel: the converter writes each layer as a
WHILE loop whose body reads step t with GATHER and writes the state into the output list with
SLICE / CONCATENATION. The int8 conversion of these loops crashes the converter (TF 2.21), so only
float models are stored. tensorflow is not needed to run the tests: the files are kept here.

    python make.py OUT_DIR
"""

import sys

import tensorflow as tf


def main(out: str) -> None:
    for kind, layer in (("gru", tf.keras.layers.GRU), ("simplernn", tf.keras.layers.SimpleRNN)):
        tf.keras.utils.set_random_seed(0)
        inputs = tf.keras.Input((20, 8), batch_size=1)
        x = layer(16, return_sequences=True)(inputs)
        x = layer(12)(x)
        model = tf.keras.Model(inputs, tf.keras.layers.Dense(4, activation="softmax")(x))
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
        with open(f"{out}/{kind}_float.tflite", "wb") as f:
            f.write(converter.convert())


if __name__ == "__main__":
    main(sys.argv[1])
