"""A miniature contribution: predicts the training mean (pyrepro's backend tests)."""
import json
import zipfile

import six  # the one locked dependency

split = json.loads(zipfile.ZipFile("../../benchmarks/bench.json.zip").read("bench.json"))
mean = sum(split["train"].values()) / len(split["train"])
with open("predictions.csv", "w") as f:
    f.write("id,prediction\n")
    for i in split["test"]:
        f.write("%s,%s\n" % (i, mean))
print("six", six.__version__)
