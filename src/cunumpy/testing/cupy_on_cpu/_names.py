"""The names of CuPy's main namespace, by how the stand-in provides them.

Taken from ``cupy/__init__.py`` of CuPy's repository (commit 6b6d956, the 15.0 development line
after 14.0; the namespace is 14's plus nothing the stand-in's users rely on). Each name is
forwarded to NumPy's object of the same name (``ALIASES`` maps CuPy's aliases to NumPy's names);
CuPy's own constructs (``asarray``, ``asnumpy``, ``ndarray``, the kernels, submodules) are
written in :mod:`._namespace`. Regenerate by reading that file's imports; do not edit by hand
beyond moving a name between groups.
"""

# Objects CuPy re-exports from NumPy itself (types, constants, dtype helpers): the same object.
NUMPY_OBJECTS = (
    "AxisError", "ComplexWarning", "DataSource", "Inf", "Infinity", "ModuleDeprecationWarning",
    "NAN", "NaN", "PINF", "RankWarning", "TooHardError", "VisibleDeprecationWarning", "bool_",
    "broadcast_shapes", "byte", "cdouble", "cfloat", "complex128", "complex64", "complex_",
    "complexfloating", "csingle", "double", "dtype", "e", "euler_gamma", "finfo", "float16",
    "float32", "float64", "float_", "floating", "format_parser", "generic", "get_printoptions",
    "half", "iinfo", "index_exp", "inexact", "inf", "infty", "int16", "int32", "int64", "int8",
    "int_", "intc", "integer", "intp", "isdtype", "issubdtype", "iterable", "longlong",
    "mintypecode", "nan", "ndindex", "newaxis", "number", "pi", "printoptions", "promote_types",
    "s_", "set_printoptions", "short", "signedinteger", "single", "singlecomplex", "typename",
    "ubyte", "uint", "uint16", "uint32", "uint64", "uint8", "uintc", "uintp", "ulonglong",
    "unsignedinteger", "ushort",
)

# CuPy ufuncs: a stand-in ufunc around NumPy's of that name.
UFUNCS = (
    "abs", "absolute", "acos", "acosh", "add", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "cbrt", "ceil", "conj", "conjugate", "copysign",
    "cos", "cosh", "deg2rad", "degrees", "divide", "divmod", "equal", "exp", "exp2", "expm1",
    "fabs", "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "frexp", "gcd",
    "greater", "greater_equal", "heaviside", "hypot", "invert", "isfinite", "isinf", "isnan",
    "lcm", "ldexp", "left_shift", "less", "less_equal", "log", "log10", "log1p", "log2",
    "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor",
    "matmul", "maximum", "minimum", "mod", "modf", "multiply", "negative", "nextafter",
    "not_equal", "positive", "pow", "power", "rad2deg", "radians", "reciprocal", "remainder",
    "right_shift", "rint", "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract",
    "tan", "tanh", "true_divide", "trunc",
)

# Functions on arrays: NumPy's, with stand-in arrays unwrapped and results wrapped.
FUNCTIONS = (
    "all", "allclose", "alltrue", "amax", "amin", "angle", "any", "append", "apply_along_axis",
    "apply_over_axes", "arange", "argmax", "argmin", "argpartition", "argsort", "argwhere",
    "around", "array2string", "array_equal", "array_equiv", "array_repr", "array_split",
    "array_str", "asarray_chkfinite", "ascontiguousarray", "asfortranarray", "astype",
    "atleast_1d", "atleast_2d", "atleast_3d", "average", "bartlett", "bincount", "blackman",
    "broadcast", "broadcast_arrays", "broadcast_to", "c_", "choose", "clip", "column_stack",
    "compress", "concat", "concatenate", "convolve", "copy", "copyto", "corrcoef", "correlate",
    "count_nonzero", "cov", "cross", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
    "delete", "diag", "diag_indices", "diag_indices_from", "diagflat", "diagonal", "diff",
    "digitize", "dot", "dsplit", "dstack", "ediff1d", "einsum", "empty", "empty_like",
    "expand_dims", "extract", "eye", "fill_diagonal", "fix", "flatiter", "flatnonzero", "flip",
    "fliplr", "flipud", "format_float_positional", "format_float_scientific", "from_dlpack",
    "frombuffer", "fromfile", "fromfunction", "fromiter", "fromstring", "full", "full_like",
    "genfromtxt", "gradient", "hamming", "hanning", "histogram", "histogram2d", "histogramdd",
    "hsplit", "hstack", "i0", "identity", "imag", "indices", "inner", "interp", "intersect1d",
    "isclose", "iscomplex", "isin", "isneginf", "isposinf", "isreal", "ix_", "kaiser", "kron",
    "lexsort", "linspace", "load", "loadtxt", "logspace", "mask_indices", "matrix_transpose",
    "max", "mean", "median", "meshgrid", "mgrid", "min", "moveaxis", "nan_to_num", "nanargmax",
    "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin",
    "nanprod", "nanstd", "nansum", "nanvar", "nonzero", "ogrid", "ones", "ones_like", "outer",
    "packbits", "pad", "partition", "percentile", "permute_dims", "piecewise", "place", "poly",
    "poly1d", "polyadd", "polyfit", "polymul", "polysub", "polyval", "prod", "ptp", "put",
    "put_along_axis", "putmask", "quantile", "r_", "ravel", "ravel_multi_index", "real",
    "real_if_close", "repeat", "require", "reshape", "resize", "roll", "rollaxis", "roots",
    "rot90", "round", "row_stack", "save", "savetxt", "savez", "savez_compressed",
    "searchsorted", "select", "setdiff1d", "setxor1d", "sinc", "sometrue", "sort",
    "sort_complex", "split", "squeeze", "stack", "std", "sum", "swapaxes", "take",
    "take_along_axis", "tensordot", "tile", "trace", "transpose", "trapezoid", "trapz", "tri",
    "tril", "tril_indices", "tril_indices_from", "trim_zeros", "triu", "triu_indices",
    "triu_indices_from", "union1d", "unique", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "unpackbits", "unravel_index", "unwrap", "vander", "var", "vdot",
    "vectorize", "vsplit", "vstack", "where", "zeros", "zeros_like",
)

# Functions that answer on the host (a dtype, a bool, a str): arrays unwrapped, results as is.
HOST_FUNCTIONS = (
    "base_repr", "binary_repr", "can_cast", "common_type", "iscomplexobj", "isfortran",
    "isrealobj", "isscalar", "may_share_memory", "min_scalar_type", "ndim", "result_type",
    "shape", "shares_memory", "size",
)

# Functions CuPy has that NumPy 2 no longer has (CuPy raises or implements them itself).
NOT_IN_NUMPY = (
    "asfarray", "byte_bounds", "cumproduct", "fromDlpack", "in1d", "issctype", "issubclass_",
    "issubsctype", "make_aligned_dtype", "msort", "obj2sctype", "product", "round_",
    "sctype2char", "who",
)

ALIASES = {
    "Inf": "inf",
    "Infinity": "inf",
    "NAN": "nan",
    "NaN": "nan",
    "PINF": "inf",
    "acos": "arccos",
    "acosh": "arccosh",
    "alltrue": "all",
    "asin": "arcsin",
    "asinh": "arcsinh",
    "atan": "arctan",
    "atan2": "arctan2",
    "atanh": "arctanh",
    "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift",
    "concat": "concatenate",
    "infty": "inf",
    "permute_dims": "transpose",
    "pow": "power",
    "sometrue": "any",
    "trapz": "trapezoid",
}
"""CuPy name -> the NumPy name it is an alias of."""
