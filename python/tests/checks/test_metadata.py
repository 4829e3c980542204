"""Metadata and docs of the case modules (built by ``tests/check_suite.rs``), read by
``tvm_ffi`` as a user would: ``Module.get_function_metadata`` parsed with
``TypeSchema.from_json_str``, and ``Module.get_function_doc``."""

import json

import pytest
import tvm_ffi
from tvm_ffi.core import TypeSchema

from support.checks import COUNTS, NO_LIBRARIES, libraries, suites


def _params():
    out = []
    for backend, directory in libraries():
        for suite in suites():
            for meta in suite.get("metadata", []):
                out.append(
                    pytest.param(
                        backend,
                        directory / f"{suite['module']}.so",
                        meta,
                        id=f"{backend}-{suite['module']}-{meta['fn']}",
                    )
                )
    if not out:
        out.append(pytest.param(None, None, None, marks=pytest.mark.skip(reason=NO_LIBRARIES)))
    return out


@pytest.mark.parametrize("backend,library,meta", _params())
def test_metadata(backend, library, meta):
    module = tvm_ffi.load_module(str(library))
    metadata = module.get_function_metadata(meta["fn"])
    schema = TypeSchema.from_json_str(metadata["type_schema"])
    assert repr(schema) == meta["repr"]
    assert json.loads(metadata["type_schema"]) == meta["type_schema"]
    assert list(metadata["arg_names"]) == meta["arg_names"]
    assert module.get_function_doc(meta["fn"]) == meta["doc"]
    COUNTS[("metadata", backend)] += 1
