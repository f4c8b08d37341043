import matminer
