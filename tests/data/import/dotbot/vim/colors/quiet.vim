" a small colour scheme
hi clear
let g:colors_name = "quiet"
