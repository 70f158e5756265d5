"""Data-parallel pretraining and finetuning over the replicas of tf.distribute.MirroredStrategy."""
