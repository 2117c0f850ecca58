"""Index model of dev/s22/plane-register-filters.patch's three-phase whole-plane cascade (one
channel, float64): the patch's phases transliterated (item order, t buffer and rec slot offsets,
row-pair windows, column parity) against a direct WTConv forward (Haar recursion, per-level conv,
inverse-Haar recursion), odd sizes, L = 1..5, K = 3, 5, 7. Needs numpy. Usage: python3 cascade_model.py"""
import numpy as np, itertools, sys
rng = np.random.default_rng(1)

def geom(H, W, L):
    h=[H]; w=[W]; pyr=[]; off=0
    for l in range(L):
        h.append((h[l]+1)//2); w.append((w[l]+1)//2); pyr.append(off); off += 4*h[l+1]*w[l+1]
    rec=[0, h[1]*w[1] if L>=2 else 0]
    return dict(h=h,w=w,pyr=pyr,pyr_size=off,rec=rec,L=L)
def rec_slot(l): return (l+1)%2
def haar4(a,b,c,d): return np.array([0.5*(a+b+c+d),0.5*(a+b-c-d),0.5*(a-b+c-d),0.5*(a-b-c+d)])
def unhaar_at(t,rb,cb):
    sr=-1. if rb else 1.; sc=-1. if cb else 1.
    return t[0]+sr*t[1]+sc*(t[2]+sr*t[3])

def pyramid(g, x):
    pyr=np.zeros(g['pyr_size'])
    for l in range(g['L']):
        hin,win_=g['h'][l],g['w'][l]
        src = x.ravel() if l==0 else pyr[g['pyr'][l-1]:]
        at=lambda i,j: src[i*win_+j] if (0<=i<hin and 0<=j<win_) else 0.
        hp,wp=g['h'][l+1],g['w'][l+1]; n=hp*wp
        for pos in range(n):
            p,q=divmod(pos,wp); v=haar4(at(2*p,2*q),at(2*p,2*q+1),at(2*p+1,2*q),at(2*p+1,2*q+1))
            for s in range(4): pyr[g['pyr'][l]+s*n+pos]=v[s]
    return pyr

def new_cascade(g, x, pyr, wl, wb, bias, K):
    r=K//2; L=g['L']; h,w=g['h'],g['w']
    tb=np.full(g['pyr_size'], np.nan); recs=np.full(max(1, g['rec'][1]+(h[2]*w[2] if L>=3 else 0)) + 64, np.nan)
    # phase 1
    items=[]
    for l in range(L):
        for it in range(4*((h[l+1]+1)//2)): items.append((l,it))
    for l,it in items:
        s=it%4; p0=2*(it//4); hp,wp=h[l+1],w[l+1]; n=hp*wp
        base=g['pyr'][l]+s*n
        def col(q):
            v=[]
            for m in range(K+1):
                pr=p0-r+m
                v.append(pyr[base+pr*wp+q] if (0<=pr<hp and 0<=q<wp) else 0.)
            return v
        win=np.zeros((K+1,K))
        for q in range(1,K): win[:,q]=col(q-1-r)
        for j in range(wp):
            win[:,:-1]=win[:,1:].copy(); win[:,K-1]=col(j+r)
            a0=a1=0.
            for pp in range(K):
                for qq in range(K):
                    a0+=wl[l][s][pp][qq]*win[pp][qq]; a1+=wl[l][s][pp][qq]*win[pp+1][qq]
            tb[base+p0*wp+j]=a0
            if p0+1<hp: tb[base+(p0+1)*wp+j]=a1
    # phase 2
    for l in range(L-1,0,-1):
        hp,wp=h[l+1],w[l+1]; n=hp*wp; t=g['pyr'][l]
        rin=g['rec'][rec_slot(l+1)]; rout=g['rec'][rec_slot(l)]
        for pos in range(n):
            p,q=divmod(pos,wp)
            tv=np.array([tb[t+pos],tb[t+n+pos],tb[t+2*n+pos],tb[t+3*n+pos]])
            if l+1<L: tv[0]+=recs[rin+pos]
            for di in range(2):
                for dj in range(2):
                    i,j=2*p+di,2*q+dj
                    if i<h[l] and j<w[l]: recs[rout+i*w[l]+j]=0.5*unhaar_at(tv,di,dj)
    # phase 3
    H,W=h[0],w[0]; hp,wp=h[1],w[1]; n1=hp*wp; t0=g['pyr'][0]; r1=g['rec'][rec_slot(1)]
    y=np.full((H,W),np.nan); xf=x.ravel()
    for p in range(hp):
        i0=2*p; second=i0+1<H
        def col(q):
            return [xf[(i0-r+m)*W+q] if (0<=i0-r+m<H and 0<=q<W) else 0. for m in range(K+1)]
        win=np.zeros((K+1,K))
        for q in range(1,K): win[:,q]=col(q-1-r)
        tv=None
        for j in range(W):
            a0=a1=bias
            win[:,:-1]=win[:,1:].copy(); win[:,K-1]=col(j+r)
            for pp in range(K):
                for qq in range(K):
                    a0+=wb[pp][qq]*win[pp][qq]; a1+=wb[pp][qq]*win[pp+1][qq]
            if j%2==0:
                pos=p*wp+j//2
                tv=np.array([tb[t0+pos],tb[t0+n1+pos],tb[t0+2*n1+pos],tb[t0+3*n1+pos]])
                if L>=2: tv[0]+=recs[r1+pos]
            ra=0.5*unhaar_at(tv,0,j&1); rb=0.5*unhaar_at(tv,1,j&1)
            y[i0,j]=a0+ra
            if second: y[i0+1,j]=a1+rb
    return y

def conv_same(a, k):
    K=k.shape[0]; r=K//2; H,W=a.shape; out=np.zeros_like(a)
    ap=np.pad(a,r)
    for i in range(H):
        for j in range(W): out[i,j]=np.sum(ap[i:i+K,j:j+K]*k)
    return out

def reference(x, wl, wb, bias, K, L):
    # ll_0 = x; c_l = H(pad(ll_l)); t_l = conv(c_l, w_l); rec from coarse: rec = crop(H^T(t_l + rec on LL))
    lls=[x]; ts=[]
    for l in range(L):
        a=lls[-1]; H,W=a.shape; ap=np.pad(a,((0,H%2),(0,W%2)))
        A,B,C,D=ap[0::2,0::2],ap[0::2,1::2],ap[1::2,0::2],ap[1::2,1::2]
        c=[0.5*(A+B+C+D),0.5*(A+B-C-D),0.5*(A-B+C-D),0.5*(A-B-C+D)]
        ts.append([conv_same(c[s], wl[l][s]) for s in range(4)]); lls.append(c[0])
    rec=None
    for l in range(L-1,-1,-1):
        t=[ts[l][s].copy() for s in range(4)]
        if rec is not None: t[0]=t[0]+rec
        hh,ww=t[0].shape; out=np.zeros((2*hh,2*ww))
        for di in range(2):
            for dj in range(2):
                sr=-1 if di else 1; sc=-1 if dj else 1
                out[di::2,dj::2]=0.5*(t[0]+sr*t[1]+sc*(t[2]+sr*t[3]))
        H,W=lls[l].shape; rec=out[:H,:W]
    return conv_same(x, wb)+bias+rec

bad=0
for (H,W,L,K) in [(14,14,3,5),(7,7,2,5),(15,17,3,3),(9,10,2,7),(13,11,3,3),(16,16,5,5),(14,14,1,5),(5,21,1,3),(12,15,4,5)]:
    g=geom(H,W,L); x=rng.uniform(-1,1,(H,W))
    wl=rng.uniform(-.5,.5,(L,4,K,K)); wb=rng.uniform(-.5,.5,(K,K)); bias=0.3
    y=new_cascade(g,x,pyramid(g,x),wl,wb,bias,K); ref=reference(x,wl,wb,bias,K,L)
    err=np.nanmax(np.abs(y-ref)); nans=np.isnan(y).sum()
    print(H,W,L,K,"max err %.2e nans %d"%(err,nans)); bad += (err>1e-10 or nans>0)
print("BAD" if bad else "ALL OK")
