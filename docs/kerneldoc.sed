# Doxygen's INPUT_FILTER for gpunic's headers (cmake/gpunic_docs.cmake): kernel-doc comments
# as doxygen reads them. "name - what" opens a comment; "@arg: text" documents an argument;
# "Return: text" the result; "@arg" in prose names an argument.
s/^( *\/?\*+ *)([a-z_][a-z0-9_]*) - /\1\\brief \2(): /
s/^( *\*? *)@([a-z_][a-z0-9_]*): */\1\\param \2 /
s/^( *\*? *)Return: */\1\\return /
s/([^A-Za-z0-9_\\])@([a-z_][a-z0-9_]*)/\1\\p \2/g
# "<path>" in prose is a placeholder, not HTML.
/^ *\*/ s/<([A-Za-z][A-Za-z0-9_ .-]*)>/\\<\1\\>/g
