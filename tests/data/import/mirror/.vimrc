set number
set expandtab shiftwidth=2
