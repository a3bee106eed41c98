"""Tests of the tests (`make meta`): every wrong module caught by the families it names, both
correct implementations passing, each diagnosis and error shape as declared, the harness
end to end in pytester. The folder marks them `meta`; the everyday suite leaves them out.
"""
