hs.hotkey.bind({"cmd", "alt"}, "R", hs.reload)
