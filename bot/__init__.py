"""What ships inside a metered bot: C sources, int8 code generation, the wasm build and the judge.

    bot.abi        the WebAssembly bot ABI: limits, the clock import, exports, the 40-byte reply
    bot.judge      Judge().factory(wasm) -> play_game bot factory (wasmtime fuel = points); play_judged_game
    bot.toolchain  compile_c(sources, out) with the project's ziglang; compiler_version()
    bot.builds     register / build_from_source / verify / factory: content-addressed registered builds
    bot.int8ref    NetSpec, Int8Net, forward (numpy integer reference), quantize_torch, fake_quant_forward
    bot.codegen    generate(net) -> C (weights as immediates via #embed) + blob; NetModule to run it
    bot/c          loong_bot.h (the ABI for C bots), random_bot.c

Docs: docs/bot-abi.md. Nothing is imported here, so ``import bot`` stays light.
"""
