"""Stopword lists for keyword extraction (SPEC 3.1): Chinese and English function words.

Single characters need no entry: keywords shorter than two characters are dropped anyway.
"""

from __future__ import annotations

__all__ = ["SINGLE_CHAR_STOPWORDS", "STOPWORDS"]

_CHINESE = """
一个 一些 一下 一直 一样 一般 一起 一点 一种 上面 下面 不是 不会 不能 不要 为了 为什么 之类 之前 之后
也是 也许 了解 什么 仍然 从而 以及 以后 以前 他们 任何 似乎 但是 你们 你好 其中 其他 其实 其它 再说
到底 即使 却是 又是 只是 只有 只要 可以 可能 各位 各种 同时 否则 告诉 哪个 哪些 哪儿 哪里 因为 因此
多少 大家 如何 如果 如此 它们 对于 就是 已经 并且 当然 得到 总是 您好 所以 所有 按照 时候 是不是 是否
曾经 有些 有的 有没有 来说 此外 正在 此时 比较 没有 然后 然而 特别 现在 的话 知道 确实 而且 而是
肯定 能够 自己 虽然 这个 这些 这样 这么 这里 这儿 这种 那个 那些 那样 那么 那里 那儿 那种 还是 还有
还要 进行 通过 非常 怎么 怎么样 怎样 我们 她们 请问 记得 记住 觉得 谢谢 应该 需不需要 是吗 好的 嗯嗯
哈哈 呵呵 有点 有关 关于 以上 以下 或者 或是 而已 罢了 吗 呢 吧 啊 哦 呀 嘛 啦
哪天 哪家 哪位 哪种 哪次 哪年 哪月 哪儿 那家 这家 那位 这位 那次 这次 那天 这天 那会 这会 一下子
来着 叫啥 干啥 是啥 为啥 咋样 怎么办 多久 多长 几岁 几号 几点 什么样 什么时候 啥时候 时候 平时
一般 通常 经常 还是 能不能 要不要 可不可以 是不是 有没有 对不对 好不好 东西 事情 一步 情况
"""

_ENGLISH = """
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each either else ever every few for from further get got had hadn has hasn have haven
having he her here hers herself him himself his how however i if in into is isn it its itself
just let ll me might mine more most much must mustn my myself neither no nor not now of off on
once only or other ought our ours ourselves out over own please re recall remember same shall
shan she should shouldn so some such than that the their theirs them themselves then there
these they this those through to too under until up us ve very was wasn we were weren what
whatever when where whether which while who whom whose why will with won would wouldn yes yet
you your yours yourself yourselves tell know
"""

STOPWORDS: frozenset[str] = frozenset(_CHINESE.split()) | frozenset(_ENGLISH.split())

# Single Chinese characters that never start or continue an unknown word: when jieba splits an
# out-of-vocabulary word such as 拿铁 into single characters, runs of characters not listed here
# are joined back into one keyword.
SINGLE_CHAR_STOPWORDS: frozenset[str] = frozenset(
    "我你您他她它的了是在有和就不也都很到说要去会着看好这那么个们把被让给从向跟比为对与及或而但又还再"
    "才只已将吗呢吧啊哦呀嘛啦一上下中里多少大小来过得地想能用做哪谁啥怎几每某各该此其之以于"
)
