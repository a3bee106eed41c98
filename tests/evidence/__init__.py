"""Implementations used as evidence that the tests are right: a second correct one in fused
PyTorch ops (`fused.py`), a third in upstream's style (`upstream_style/`, a submission's layout)
and deliberately wrong ones (`wrong/`, each naming the families that must catch it).
"""
